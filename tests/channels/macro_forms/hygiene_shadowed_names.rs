//! Generated code keeps working when the user's module shadows prelude and common names.

#![allow(dead_code, non_camel_case_types, non_snake_case)]

mod shadowing {
    use zlink::HandlerContext;

    struct Result;
    struct Option;
    struct Vec;
    struct String;
    struct Box;
    struct Bytes;
    struct Error;
    struct Message;
    struct Request;
    struct Self_;
    struct message;
    struct payload;
    struct packet;
    struct ctx;
    struct bytes;
    struct request;
    struct options;
    struct runtime;
    struct channel;
    struct reply;
    struct f;
    fn Ok() {}
    fn Err() {}

    #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
    #[message(reply = Answer)]
    pub struct Question(pub u32);

    #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
    pub struct Answer(pub u32);

    #[derive(serde::Serialize, serde::Deserialize, zlink::Message)]
    pub struct Remark;

    #[derive(Clone)]
    pub struct Oracle;

    #[zlink::channel(server)]
    impl Oracle {
        #[handler]
        async fn ask(
            &self,
            question: Question,
            _ctx: &HandlerContext,
        ) -> core::result::Result<Answer, zlink::Error> {
            core::result::Result::Ok(Answer(question.0 * 2))
        }

        #[handler]
        async fn remark(
            &self,
            _remark: Remark,
            _ctx: &HandlerContext,
        ) -> core::result::Result<(), zlink::Error> {
            core::result::Result::Ok(())
        }
    }
}

#[test]
fn hygiene_shadowed_names() {
    use zlink::HandlerGroup;
    assert_eq!(shadowing::Oracle.packets().len(), 2);
    let _: Option<shadowing::OracleClient> = None;
}
